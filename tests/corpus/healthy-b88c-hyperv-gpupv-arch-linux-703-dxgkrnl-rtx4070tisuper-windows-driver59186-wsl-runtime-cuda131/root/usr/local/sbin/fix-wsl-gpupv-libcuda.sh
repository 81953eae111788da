#!/usr/bin/env bash
set -e

cd /usr/lib/wsl/drivers

ln -sfn libcuda.so.1.1 libcuda.so
ln -sfn libcuda.so.1.1 libcuda.so.1
ln -sfn libnvidia-ml.so.1 libnvidia-ml.so
ln -sfn libnvidia-encode.so.1 libnvidia-encode.so
ln -sfn libnvcuvid.so.1 libnvcuvid.so
ln -sfn libnvidia-opticalflow.so.1 libnvidia-opticalflow.so
ln -sfn libnvdxgdmal.so.1 libnvdxgdmal.so
