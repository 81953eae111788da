package = "cudnn"
version = "scm-1"
source = { url = "git://github.com/soumith/cudnn.torch.git", }
