"""The process that asks whether CUDA initialises: ``python cuinit_child.py`` (started by
:meth:`envdoctor.host.live.LiveHost.start_cuda_init`; the parent reads it with :mod:`envdoctor.host.cudainit`).

It loads ``libcuda.so.1`` as any CUDA program does (the user's environment as it is: ``LD_LIBRARY_PATH`` and
``CUDA_VISIBLE_DEVICES`` are what the user's programs get), then calls ``cuInit(0)``, ``cuDriverGetVersion``,
``cuDeviceGetCount``, and ``cuDeviceGet`` and ``cuDeviceGetPCIBusId`` of each device
(:mod:`envdoctor.host.driver_api`), and ``cuGetErrorName`` of a failure. No context is created (``cuInit`` creates
none, and no primary context is retained): nothing on the GPUs changes. It writes one JSON object per line on its
own copy of standard output as it goes (the driver's own prints go to /dev/null), so when a call hangs or crashes
the lines before it survive
and the call it was in is known. The parent kills it at its time limit. No envdoctor imports: it runs as a script
(a fresh interpreter, in which nothing initialised CUDA before it).

The events: ``start`` (the library is about to be loaded), ``no_library`` (``message``: the loader's words),
``doing`` (``call``: the call it is about to make), ``init`` (``code``, ``name``), ``version`` (``value``, or
``code`` and ``name``), ``count`` (the same), ``device`` (``index``, ``bus_id``, or ``code`` and ``name``), ``done``.
"""

import ctypes
import json
import os
import sys

try:  # imported as a package module (tests): the sibling module
    from . import driver_api  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - run as a script (every real run): this file's folder is on sys.path
    import driver_api  # type: ignore[no-redef]

#: The most devices whose PCI bus id is asked (a machine has at most a few dozen GPUs).
MAX_DEVICES = 256

_out = 1


def emit(doc):
    data = (json.dumps(doc, sort_keys=True) + "\n").encode("utf-8")
    while data:
        data = data[os.write(_out, data):]


def _failed(event, drv, call, code, **extra):
    doc = {"event": event, "call": call, "code": int(code), "name": drv.error_name(code)}
    doc.update(extra)
    emit(doc)


def run(name="libcuda.so.1"):
    emit({"event": "start"})
    try:
        drv = driver_api.Driver(name)
    except OSError as exc:
        emit({"event": "no_library", "message": str(exc)[:300]})
        return
    fns = drv.fns
    if "cuInit" not in fns:
        emit({"event": "init", "code": -1, "name": "cuInit is not exported by this library"})
        return
    emit({"event": "doing", "call": "cuInit"})
    code = fns["cuInit"][1](0)
    if code != driver_api.CUDA_SUCCESS:
        _failed("init", drv, "cuInit", code)
    else:
        emit({"event": "init", "code": 0, "name": "CUDA_SUCCESS"})
    if "cuDriverGetVersion" in fns:
        emit({"event": "doing", "call": "cuDriverGetVersion"})
        version = ctypes.c_int(0)
        got = fns["cuDriverGetVersion"][1](ctypes.byref(version))
        if got == driver_api.CUDA_SUCCESS:
            emit({"event": "version", "value": int(version.value)})
        else:
            _failed("version", drv, "cuDriverGetVersion", got)
    if code != driver_api.CUDA_SUCCESS:
        emit({"event": "done"})
        return
    count = ctypes.c_int(0)
    emit({"event": "doing", "call": "cuDeviceGetCount"})
    got = fns["cuDeviceGetCount"][1](ctypes.byref(count)) if "cuDeviceGetCount" in fns else -1
    if got != driver_api.CUDA_SUCCESS:
        _failed("count", drv, "cuDeviceGetCount", got)
        emit({"event": "done"})
        return
    emit({"event": "count", "value": int(count.value)})
    if "cuDeviceGetPCIBusId" in fns:
        for index in range(min(int(count.value), MAX_DEVICES)):
            emit({"event": "doing", "call": "cuDeviceGetPCIBusId", "index": index})
            dev = driver_api.CUdevice(index)
            got = fns["cuDeviceGet"][1](ctypes.byref(dev), index) if "cuDeviceGet" in fns else 0
            if got != driver_api.CUDA_SUCCESS:
                _failed("device", drv, "cuDeviceGet", got, index=index)
                continue
            buf = ctypes.create_string_buffer(64)
            got = fns["cuDeviceGetPCIBusId"][1](buf, 64, dev)
            if got == driver_api.CUDA_SUCCESS:
                emit({"event": "device", "index": index, "bus_id": buf.value.decode("ascii", "replace")})
            else:
                _failed("device", drv, "cuDeviceGetPCIBusId", got, index=index)
    emit({"event": "done"})


def main():
    global _out
    _out = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
