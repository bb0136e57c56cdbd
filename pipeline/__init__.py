"""pipeline"""

from .worker_env import set_in_worker

set_in_worker()  # a Ray worker's Arrow pool, before anything it runs imports pyarrow
