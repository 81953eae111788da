__version__ = '1.8.2+cu102'
debug = False
cuda = '10.2'
git_version = 'e0495a7aa104471d95dc85a1b8f6473fbcc427a8'
hip = None
