from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '1.3.1'
debug = False
cuda: Optional[str] = '10.1.243'
hip: Optional[str] = None
