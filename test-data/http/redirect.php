<?php
// A Location header alone makes PHP answer 302; ?code= picks another redirect status.
if (isset($_GET['code'])) {
    header('Location: /hello.php?from=redirect', true, (int) $_GET['code']);
} else {
    header('Location: /hello.php?from=redirect');
}
