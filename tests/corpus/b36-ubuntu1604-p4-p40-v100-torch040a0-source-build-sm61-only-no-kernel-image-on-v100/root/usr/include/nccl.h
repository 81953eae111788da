#define NCCL_MAJOR 2
#define NCCL_MINOR 1
#define NCCL_PATCH 2
