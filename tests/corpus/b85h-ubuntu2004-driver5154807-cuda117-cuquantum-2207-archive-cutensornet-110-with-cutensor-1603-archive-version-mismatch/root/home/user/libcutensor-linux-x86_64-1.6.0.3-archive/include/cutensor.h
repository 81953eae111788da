/* excerpt: the version macros of cuTENSOR 1.6.0 */
#define CUTENSOR_MAJOR 1 //!< cuTensor major version.
#define CUTENSOR_MINOR 6 //!< cuTensor minor version.
#define CUTENSOR_PATCH 0 //!< cuTensor patch version.
#define CUTENSOR_VERSION (CUTENSOR_MAJOR * 10000 + CUTENSOR_MINOR * 100 + CUTENSOR_PATCH)
