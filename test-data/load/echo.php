<?php
// Echoes the request body (classic mode).
header('Content-Type: text/plain');
echo file_get_contents('php://input');
