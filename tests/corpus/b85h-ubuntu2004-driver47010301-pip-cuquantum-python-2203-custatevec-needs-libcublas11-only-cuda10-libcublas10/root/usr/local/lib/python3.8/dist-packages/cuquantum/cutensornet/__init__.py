from cuquantum.cutensornet.cutensornet import *
from cuquantum.cutensornet.configuration import *
from cuquantum.cutensornet.memory import *
from cuquantum.cutensornet.tensor_network import *
