from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '1.10.2+cu113'
debug = False
cuda: Optional[str] = '11.3'
hip: Optional[str] = None
