#define NCCL_MAJOR 2
#define NCCL_MINOR 16
#define NCCL_PATCH 5
