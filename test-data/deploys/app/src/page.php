<?php
// What every endpoint answers: the release in a header and in the body, and the release
// the request's DOCUMENT_ROOT belongs to (a request routed in release N runs N's code
// with N's document root, even when the switch happens while it runs).
function release_page(): void
{
    $root = basename(dirname($_SERVER['DOCUMENT_ROOT']));
    header('X-Release: ' . RELEASE);
    header('X-Root-Release: ' . $root);
    echo 'release ', RELEASE, "\n";
}
