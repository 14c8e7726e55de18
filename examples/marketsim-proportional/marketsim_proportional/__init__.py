"""Example marketsim plugin: ``proportional-share``, a fair-share GPU allocator that splits every
GPU type in proportion to the tenants' reported speedups on it, with two claims."""
