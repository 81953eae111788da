from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '2.1.0+cu118'
debug = False
cuda: Optional[str] = '11.8'
hip: Optional[str] = None
