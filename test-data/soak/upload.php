<?php
// Multipart upload: PHP writes the file to upload_tmp_dir and must delete it at request end.
$f = $_FILES['file'] ?? null;
echo $f && $f['error'] === UPLOAD_ERR_OK ? 'uploaded ' . filesize($f['tmp_name']) : 'no file';
