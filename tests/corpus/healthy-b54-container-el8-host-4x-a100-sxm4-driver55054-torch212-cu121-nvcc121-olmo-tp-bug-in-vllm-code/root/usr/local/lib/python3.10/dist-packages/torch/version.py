from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '2.1.2+cu121'
debug = False
cuda: Optional[str] = '12.1'
hip: Optional[str] = None
