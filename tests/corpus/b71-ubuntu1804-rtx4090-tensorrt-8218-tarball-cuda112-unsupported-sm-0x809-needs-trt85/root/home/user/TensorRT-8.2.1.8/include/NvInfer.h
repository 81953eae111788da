/* TensorRT 8.2 API header (marker) */
