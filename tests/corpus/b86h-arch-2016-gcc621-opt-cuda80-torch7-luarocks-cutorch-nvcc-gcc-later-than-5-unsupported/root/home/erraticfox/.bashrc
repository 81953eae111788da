. /home/erraticfox/torch/install/bin/torch-activate
