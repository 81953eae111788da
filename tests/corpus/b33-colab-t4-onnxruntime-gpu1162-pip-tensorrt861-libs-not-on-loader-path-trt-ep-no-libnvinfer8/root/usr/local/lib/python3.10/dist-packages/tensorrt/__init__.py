__version__ = "8.6.1"
