from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '2.1.0a0+4136153'
debug = False
cuda: Optional[str] = '12.1'
git_version = '4136153'
hip: Optional[str] = None
