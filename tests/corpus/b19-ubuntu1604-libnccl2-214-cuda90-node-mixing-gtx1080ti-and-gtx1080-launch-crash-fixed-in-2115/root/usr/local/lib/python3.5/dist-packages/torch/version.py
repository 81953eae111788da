__version__ = '0.4.0a0+3749c58'
debug = False
cuda = '9.0.176'
