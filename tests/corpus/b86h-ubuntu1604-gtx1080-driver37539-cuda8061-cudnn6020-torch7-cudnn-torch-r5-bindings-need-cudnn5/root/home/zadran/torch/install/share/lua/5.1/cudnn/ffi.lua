-- cudnn.torch (master = R5 bindings), excerpt of the library load and version check
local libnames = {'libcudnn.so.5', 'libcudnn.5.dylib', 'cudnn64_5.dll'}
local ok = false
if os.getenv('CUDNN_PATH') then
   print('Found Environment variable CUDNN_PATH = ' .. os.getenv('CUDNN_PATH'))
   ok = pcall(function() cudnn.C = ffi.load(os.getenv('CUDNN_PATH')) end)
else
   for i=1,#libnames do
      ok = pcall(function () cudnn.C = ffi.load(libnames[i]) end)
      if ok then break; end
   end
end
if not ok then
   error("'libcudnn (R5) not found in library path.")
end
cudnn.version = tonumber(cudnn.C.cudnnGetVersion())
if cudnn.version < 5005 or cudnn.version >= 6000 then
   error('These bindings are for CUDNN 5.x (5005 <= cudnn.version > 6000) , while the loaded CuDNN is version: ' .. cudnn.version
            .. '  \nAre you using an older or newer version of CuDNN?')
end
