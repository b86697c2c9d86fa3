<?php
// A file handle and the php://input stream opened at boot stay usable in every request
// (TestFileStreamInWorkerMode): each request reads the next five bytes.
$words = fopen(__DIR__ . '/file-stream.txt', 'r');
$input = fopen('php://input', 'r');

while (frankenphp_handle_request(static function () use ($words, $input): void {
    echo fread($words, 5);
    stream_is_local($input);
})) {
}
fclose($words);
