__version__ = '1.14.0a0+44dac51'
debug = False
cuda = '12.0'
git_version = '44dac51df5e1d9b9a41c3bdf2d2bb8dd6c4b4e9a'
hip = None
