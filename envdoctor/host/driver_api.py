"""The CUDA driver API calls envdoctor makes, through ``ctypes`` over ``libcuda.so.1``.

Run inside a child process only: ``envdoctor bench``'s (:mod:`envdoctor.bench.child`) and the CUDA-initialisation
question's (:mod:`envdoctor.host.cuinit_child`), each of which loads this file as a module of its own folder:
loading the driver and initialising CUDA there means a driver that hangs or crashes takes that process down,
never envdoctor. It lives with the host seam (the lowest layer that runs anything) so both can use it.
No envdoctor imports here.

Every prototype is the one NVIDIA's ``cuda.h`` declares (checked against the headers of CUDA 12.6 and 13.0):
the entry points named with ``_v2`` are the ones the header's macros map the plain names to since CUDA 3.2
(``#define cuMemAlloc cuMemAlloc_v2``, ``#define cuMemcpyHtoD __CUDA_API_PTDS(cuMemcpyHtoD_v2)`` ...), with
64-bit ``CUdeviceptr`` and ``size_t`` sizes::

    CUresult cuInit(unsigned int Flags);
    CUresult cuDriverGetVersion(int *driverVersion);
    CUresult cuDeviceGetCount(int *count);
    CUresult cuDeviceGet(CUdevice *device, int ordinal);
    CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev);
    CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
    CUresult cuCtxSetCurrent(CUcontext ctx);
    CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
    CUresult cuMemAllocHost_v2(void **pp, size_t bytesize);
    CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
    CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
    CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
    CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                          CUcontext srcContext, size_t ByteCount);
    CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N);
    CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev);
    CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags);
    CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags);
    CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
    CUresult cuEventSynchronize(CUevent hEvent);
    CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);   (_v2 from CUDA 12.8)
    CUresult cuGetErrorName(CUresult error, const char **pStr);

``CUdevice`` is an ``int``; ``CUcontext``, ``CUevent`` and ``CUstream`` are opaque pointers (stream 0 is the
legacy default stream). The primary context (what the CUDA runtime, and so every framework, uses) is retained
rather than a context created, so the copies run as a framework's would.
"""

import ctypes

#: cuda.h's CUresult values the bench names itself.
CUDA_SUCCESS = 0
CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704

c_int, c_uint, c_size_t, c_void_p, c_char_p = ctypes.c_int, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p, \
    ctypes.c_char_p
CUdeviceptr = ctypes.c_ulonglong
CUdevice = ctypes.c_int
CUcontext = ctypes.c_void_p
CUevent = ctypes.c_void_p
CUstream = ctypes.c_void_p

#: name -> (argument types); every function returns CUresult (an int). A tuple of names: the first the
#: library exports is used (a newer name first).
PROTOTYPES = (
    ("cuInit", (c_uint,)),
    ("cuDriverGetVersion", (ctypes.POINTER(c_int),)),
    ("cuDeviceGetCount", (ctypes.POINTER(c_int),)),
    ("cuDeviceGet", (ctypes.POINTER(CUdevice), c_int)),
    ("cuDeviceGetPCIBusId", (c_char_p, c_int, CUdevice)),
    ("cuDevicePrimaryCtxRetain", (ctypes.POINTER(CUcontext), CUdevice)),
    ("cuCtxSetCurrent", (CUcontext,)),
    ("cuMemAlloc_v2", (ctypes.POINTER(CUdeviceptr), c_size_t)),
    ("cuMemAllocHost_v2", (ctypes.POINTER(c_void_p), c_size_t)),
    ("cuMemcpyHtoD_v2", (CUdeviceptr, c_void_p, c_size_t)),
    ("cuMemcpyDtoH_v2", (c_void_p, CUdeviceptr, c_size_t)),
    ("cuMemcpyDtoD_v2", (CUdeviceptr, CUdeviceptr, c_size_t)),
    ("cuMemcpyPeer", (CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, c_size_t)),
    ("cuMemsetD8_v2", (CUdeviceptr, ctypes.c_ubyte, c_size_t)),
    ("cuDeviceCanAccessPeer", (ctypes.POINTER(c_int), CUdevice, CUdevice)),
    ("cuCtxEnablePeerAccess", (CUcontext, c_uint)),
    ("cuEventCreate", (ctypes.POINTER(CUevent), c_uint)),
    ("cuEventRecord", (CUevent, CUstream)),
    ("cuEventSynchronize", (CUevent,)),
    (("cuEventElapsedTime_v2", "cuEventElapsedTime"), (ctypes.POINTER(ctypes.c_float), CUevent, CUevent)),
)


class CudaError(Exception):
    """A driver call that did not return CUDA_SUCCESS: the call, the code and the driver's name for it."""

    def __init__(self, call, code, name):
        Exception.__init__(self, "%s returned %s (%d)" % (call, name, code))
        self.call, self.code, self.name = call, code, name


class Driver:
    """``libcuda.so.1`` with the prototypes above; each call raises :class:`CudaError` on failure."""

    def __init__(self, name="libcuda.so.1"):
        self.lib = ctypes.CDLL(name)  # OSError when there is no driver
        self.fns = {}
        for names, argtypes in PROTOTYPES:
            for n in (names if isinstance(names, tuple) else (names,)):
                fn = getattr(self.lib, n, None)
                if fn is not None:
                    fn.argtypes = argtypes
                    fn.restype = c_int
                    self.fns[names[-1] if isinstance(names, tuple) else names] = (n, fn)
                    break
        get_name = getattr(self.lib, "cuGetErrorName", None)
        if get_name is not None:
            get_name.argtypes = (c_int, ctypes.POINTER(c_char_p))
            get_name.restype = c_int
        self._get_name = get_name

    def error_name(self, code):
        if self._get_name is not None:
            text = c_char_p()
            if self._get_name(code, ctypes.byref(text)) == CUDA_SUCCESS and text.value:
                return text.value.decode("ascii", "replace")
        return "CUDA error %d" % code

    def call(self, name, *args, **kw):
        """Call ``name``; ``ok`` lists return codes taken as success besides CUDA_SUCCESS."""
        if name not in self.fns:
            raise CudaError(name, -1, "not exported by this driver")
        real, fn = self.fns[name]
        code = fn(*args)
        if code != CUDA_SUCCESS and code not in kw.get("ok", ()):
            raise CudaError(real, code, self.error_name(code))
        return code
