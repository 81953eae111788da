require 'cunn'
cudnn = require 'cudnn.env'
require('cudnn.ffi')
