/* excerpt: the version macros of cuTensorNet 1.1.0 (cuQuantum 22.07.0) */
#define CUTENSORNET_MAJOR 1 //!< cuTensorNet major version.
#define CUTENSORNET_MINOR 1 //!< cuTensorNet minor version.
#define CUTENSORNET_PATCH 0 //!< cuTensorNet patch version.
#define CUTENSORNET_VERSION (CUTENSORNET_MAJOR * 10000 + CUTENSORNET_MINOR * 100 + CUTENSORNET_PATCH)
