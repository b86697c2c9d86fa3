<?php
// A multipart upload reaches $_FILES and can be moved (TestFileUpload).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    $file = $_FILES['file'] ?? null;
    $to = tempnam(sys_get_temp_dir(), 'dual-upload');
    if ($file && move_uploaded_file($file['tmp_name'], $to) && file_get_contents($to) === 'bar') {
        echo 'Upload OK ', $file['name'];
    } else {
        echo 'Upload failed: ', json_encode($_FILES);
    }
    @unlink($to);
});
