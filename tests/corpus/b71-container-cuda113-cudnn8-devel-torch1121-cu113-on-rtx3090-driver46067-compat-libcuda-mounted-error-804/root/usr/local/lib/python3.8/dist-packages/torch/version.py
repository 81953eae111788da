__version__ = '1.12.1+cu113'
debug = False
cuda = '11.3'
hip = None
