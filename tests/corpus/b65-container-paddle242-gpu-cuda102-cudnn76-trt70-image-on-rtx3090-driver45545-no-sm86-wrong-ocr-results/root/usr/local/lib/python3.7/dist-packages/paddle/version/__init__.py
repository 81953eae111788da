# THIS FILE IS GENERATED FROM PADDLEPADDLE SETUP.PY
#
full_version    = '2.4.2'
major           = '2'
minor           = '4'
patch           = '2'
rc              = '0'
cuda_version    = '10.2'
cudnn_version   = '7.6.5'
istaged         = True
commit          = '0e92adceae06b6b7463f2dc7790ffb0601730009'
with_mkl        = 'ON'
