__version__ = '1.7.0+cu110'
debug = False
cuda = '11.0'
git_version = 'e85d494707b835c12165976b8442af54b9afcb26'
hip = None
