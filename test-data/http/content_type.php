<?php
// Answers with the Content-Type asked for (?t=), or PHP's default without one.
if (isset($_GET['t'])) {
    header('Content-Type: ' . $_GET['t']);
}
echo 'ok';
