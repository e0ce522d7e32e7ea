"""The Parquet cache of parsed session files: :class:`Cache` (:mod:`.packs`) and its encoding (:mod:`.codec`)."""
from .codec import Entry, FileKey, parser_version
from .packs import Cache, CacheStats, CacheWarning, as_cache, default_cache_dir

__all__ = ["Cache", "CacheStats", "CacheWarning", "Entry", "FileKey", "as_cache", "default_cache_dir",
           "parser_version"]
