"""Reproduction studies shipped with this plugin (TOML files; ``marketsim run NAME``)."""
