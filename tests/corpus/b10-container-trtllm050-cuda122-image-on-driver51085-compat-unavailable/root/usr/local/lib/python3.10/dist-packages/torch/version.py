from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '2.1.0a0+29c30b1'
debug = False
cuda: Optional[str] = '12.2'
git_version = '29c30b1'
hip: Optional[str] = None
