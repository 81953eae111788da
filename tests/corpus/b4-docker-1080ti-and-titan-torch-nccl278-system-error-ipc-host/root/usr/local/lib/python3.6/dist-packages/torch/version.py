from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '1.8.1'
debug = False
cuda: Optional[str] = '10.2'
hip: Optional[str] = None
