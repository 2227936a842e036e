package simhost

import "testing"

func TestCUDAVersion(t *testing.T) {
	for driver, want := range map[string]string{
		"595.10": "13.1", "590.44.01": "13.1", "580.95.05": "13.0", "575.57.08": "12.9", "570.195.03": "12.8",
		"565.1": "12.6", "560.35": "12.6", "550.163.01": "12.4", "535.274.02": "12.2", "525.1": "12.0", "": "12.0",
	} {
		if got := cudaVersion(driver); got != want {
			t.Errorf("cudaVersion(%q) = %q, want %q", driver, got, want)
		}
	}
}
