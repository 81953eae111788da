full_version    = '1.2.0'
major           = '1'
minor           = '2'
patch           = '0'
rc              = '0'
istaged         = True
commit          = '8d2b5b5'
with_mkl        = 'ON'
