<?php
echo json_encode(UserCache\Cache::info());
