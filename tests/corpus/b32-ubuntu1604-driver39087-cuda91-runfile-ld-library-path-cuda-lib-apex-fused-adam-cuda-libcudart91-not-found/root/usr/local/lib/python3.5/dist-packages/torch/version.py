__version__ = '1.0.0'
debug = False
cuda = '9.0.176'
git_version = 'db5d3131d16f57abd4f13d3f4b885d5f67bf6644'
