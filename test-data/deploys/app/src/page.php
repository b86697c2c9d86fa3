<?php
// What every endpoint answers: the release in a header and in the body, and the releases
// the request's DOCUMENT_ROOT and SCRIPT_FILENAME belong to (`.../releases/N/public`):
// a request routed in release N runs N's code with N's paths, even when the switch
// happens while it runs.
function release_page(): void
{
    header('X-Release: ' . RELEASE);
    header('X-Root-Release: ' . basename(dirname($_SERVER['DOCUMENT_ROOT'])));
    header('X-Script-Release: ' . basename(dirname($_SERVER['SCRIPT_FILENAME'], 2)));
    echo 'release ', RELEASE, "\n";
}
