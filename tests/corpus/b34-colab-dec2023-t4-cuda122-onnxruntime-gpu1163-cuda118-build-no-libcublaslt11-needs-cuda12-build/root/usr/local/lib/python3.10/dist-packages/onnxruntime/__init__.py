__version__ = "1.16.3"
