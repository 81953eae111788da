from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '2.0.0.dev20221214+cu117'
debug = False
cuda: Optional[str] = '11.7'
hip: Optional[str] = None
