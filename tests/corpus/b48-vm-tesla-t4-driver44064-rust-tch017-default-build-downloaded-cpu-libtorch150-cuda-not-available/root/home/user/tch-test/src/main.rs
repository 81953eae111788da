use tch::Cuda;

fn main() {
    println!("Cuda available: {:?}", Cuda::is_available());
}
