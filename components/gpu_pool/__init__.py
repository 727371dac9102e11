"""gpu_pool."""
