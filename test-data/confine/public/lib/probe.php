<?php
// What a script confined by --confine (open_basedir) can and cannot reach, one case per
// request, answered as JSON: the result and the warnings PHP raised, if any.
function confine_probe(): string
{
    $warnings = [];
    set_error_handler(function (int $no, string $msg) use (&$warnings): bool {
        $warnings[] = $msg;
        return true;
    });
    $case = $_GET['case'] ?? '';
    switch ($case) {
        case 'read':
            // An absolute path, or one relative to this directory ("../../outside.txt").
            $path = $_GET['path'] ?? '';
            if ($path !== '' && $path[0] !== '/') {
                $path = __DIR__ . '/' . $path;
            }
            $result = file_get_contents($path);
            break;
        case 'include':
            $result = (include __DIR__ . '/inc.php')();
            break;
        case 'session':
            session_start();
            $_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
            $result = $_SESSION['n'];
            session_write_close();
            break;
        case 'upload':
            $file = $_FILES['f'] ?? null;
            $result = $file === null ? null : [
                'is_uploaded_file' => is_uploaded_file($file['tmp_name']),
                'content' => file_get_contents($file['tmp_name']),
            ];
            break;
        case 'tempfile':
            $name = tempnam(sys_get_temp_dir(), 'confine');
            $result = $name !== false && file_put_contents($name, 'x') === 1 && unlink($name);
            break;
        default:
            $result = null;
    }
    restore_error_handler();
    return json_encode(['result' => $result, 'warning' => $warnings ? implode("\n", $warnings) : null]);
}
