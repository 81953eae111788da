/* TensorRT 7.0 API header (marker) */
