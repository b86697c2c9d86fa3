<?php
// Stores the uploaded file `f` through WordPress's own upload handling
// (wp_handle_upload: the uploads directory, year/month folders, unique names), and says
// where it went.
require __DIR__ . '/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/file.php';

$result = wp_handle_upload($_FILES['f'], ['test_form' => false, 'mimes' => ['txt' => 'text/plain']]);
$dir = wp_upload_dir();
header('Content-Type: application/json');
echo json_encode($result + [
    'basedir' => $dir['basedir'],
    'realpath' => realpath($dir['basedir']),
    'file_realpath' => isset($result['file']) ? realpath($result['file']) : null,
]);
