<?php
// The notes app's front controller (classic mode runs it per request; worker.php
// includes it per request).
require_once __DIR__ . '/lib.php';

$action = $_POST['action'] ?? $_GET['action'] ?? 'list';
switch ($action) {
    case 'create':
        $id = notes_create($_POST['title'] ?? '', $_POST['body'] ?? '');
        header("Location: /index.php?action=show&id=$id", true, 303);
        break;
    case 'update':
        if (!notes_update((int) $_POST['id'], (int) $_POST['revision'], $_POST['body'] ?? '')) {
            http_response_code(409);
            echo "stale revision\n";
        } else {
            header('Location: /index.php', true, 303);
        }
        break;
    case 'delete':
        notes_delete((int) $_POST['id']);
        header('Location: /index.php', true, 303);
        break;
    case 'json':
        header('Content-Type: application/json');
        echo json_encode(['notes' => notes_list(), 'backends' => notes_backends(),
            'worker' => function_exists('ferrophp_handle_request') && isset($GLOBALS['notes_worker'])]);
        break;
    default:
        header('Content-Type: text/html; charset=utf-8');
        echo "<!doctype html><title>Notes</title><ul>\n";
        foreach (notes_list() as $n) {
            printf("<li id=\"note-%d\">%s: %s (r%d)</li>\n", $n['id'], htmlspecialchars($n['title']),
                htmlspecialchars($n['body']), $n['revision']);
        }
        echo "</ul>\n";
}
