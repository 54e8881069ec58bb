"""The interruption controller (AWS): EC2 interruption events from SQS → cordon and drain."""
