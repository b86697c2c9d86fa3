<?php
// Copied to a temp dir by the --watch test, which rewrites "version-1" in place.
$bootId = bin2hex(random_bytes(4));
while (ferrophp_handle_request(static function () use ($bootId): void {
    echo "version-1:$bootId";
})) {
}
