__version__ = '1.0.0'
debug = False
cuda = '9.0.176'
