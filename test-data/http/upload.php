<?php
// Moves every uploaded file into ?dir= (keeping its client name) and reports $_FILES.
header('Content-Type: application/json');
$dir = $_GET['dir'] ?? sys_get_temp_dir();
$moved = [];
foreach ($_FILES as $field => $file) {
    $dest = $dir . '/' . basename($file['name']);
    $uploaded = is_uploaded_file($file['tmp_name']);
    $moved[$field] = [
        'is_uploaded_file' => $uploaded,
        'moved' => move_uploaded_file($file['tmp_name'], $dest),
        'dest' => $dest,
        'tmp_gone' => !file_exists($file['tmp_name']),
    ];
}
echo json_encode(['files' => $_FILES, 'moved' => $moved, 'post' => $_POST]);
