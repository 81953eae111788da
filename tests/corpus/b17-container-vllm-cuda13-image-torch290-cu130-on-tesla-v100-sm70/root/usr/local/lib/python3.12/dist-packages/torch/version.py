from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '2.9.0+cu130'
debug = False
cuda: Optional[str] = '13.0'
git_version = 'Unknown'
hip: Optional[str] = None
