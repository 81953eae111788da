#include <thrust/device_vector.h>
int main(int argc, char **argv) {
    thrust::device_vector<char> a(6);
    return 0;
}
