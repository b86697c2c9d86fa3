<?php
// The realpath cache of the PHP thread serving this request, one cached path per line
// (server/tests/upload_realpath_cache.rs looks for upload temp names in it).
foreach (realpath_cache_get() as $path => $_) {
    echo $path, "\n";
}
