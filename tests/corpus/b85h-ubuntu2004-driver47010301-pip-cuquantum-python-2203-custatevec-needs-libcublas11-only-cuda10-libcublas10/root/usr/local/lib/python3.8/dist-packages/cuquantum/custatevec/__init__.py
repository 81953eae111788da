from cuquantum.custatevec.custatevec import *
