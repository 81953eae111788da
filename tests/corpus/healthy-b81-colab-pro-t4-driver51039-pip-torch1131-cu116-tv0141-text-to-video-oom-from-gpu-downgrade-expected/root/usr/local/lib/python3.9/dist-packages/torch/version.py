__version__ = '1.13.1+cu116'
debug = False
cuda = '11.6'
git_version = '49444c3e546bf240bed24a101e747422d1f8a0ee'
hip = None
